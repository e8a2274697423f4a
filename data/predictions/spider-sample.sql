SELECT COUNT(*) FROM tracks AS T JOIN genres AS G ON T.genre_id = G.genre_id WHERE G.name = 'Jazz'
SELECT C.first_name, C.last_name, ROUND(SUM(I.total), 2) AS spent FROM customers AS C JOIN invoices AS I ON C.customer_id = I.customer_id GROUP BY C.customer_id ORDER BY spent DESC, C.customer_id ASC LIMIT 5
SELECT S.company_name, COUNT(*) AS n FROM orders AS O JOIN shippers AS S ON O.shipper_id = S.shipper_id GROUP BY S.shipper_id ORDER BY S.company_name
SELECT P.name, P.unit_price FROM products AS P JOIN categories AS C ON P.category_id = C.category_id WHERE C.name = 'Dairy' AND P.unit_price > 5
SELECT D.name, COUNT(*) AS n FROM students AS S JOIN departments AS D ON S.major_dept_id = D.dept_id GROUP BY D.dept_id HAVING D.name = 'Chemistry' ORDER BY n DESC, D.name
SELECT C.course_id, C.title, C.credits FROM courses AS C JOIN departments AS D ON C.dept_id = D.dept_id WHERE D.name = 'Physics'
